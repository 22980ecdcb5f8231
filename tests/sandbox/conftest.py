import pytest

from tests.support.sandbox_world import World, small_scenario


@pytest.fixture
def world() -> World:
    """A small suite on a virtual clock: one review board, four agents."""
    return World(small_scenario())
