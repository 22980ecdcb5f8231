import sys
from pathlib import Path

import pytest

# The sandbox's tests need only the repository root on the path: no settings, no database.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sandbox_world import World, small_scenario  # noqa: E402


@pytest.fixture
def world() -> World:
    """A small suite on a virtual clock: one review board, four agents."""
    return World(small_scenario())
