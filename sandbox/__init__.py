"""A local stand-in for the suite SuperDispatch talks to, with simulated agents that pull work.

Never imported by the service: tests, the simulator and the benchmarks use it.
"""

from .adapter import SandboxAdapter, mount, sandbox_session
from .clock import VirtualClock, rfc3339, system_clock
from .http import SandboxServers
from .metrics import Metrics
from .receiver import Receiver, ReceiverServer
from .scenario import Scenario, ScenarioError, load_scenario, parse_scenario, shipped_scenarios
from .simulation import RealtimeDriver, Simulation
from .suite import DispatchConfig, ProductUrls, Suite, Toggles

__all__ = [
    "DispatchConfig",
    "Metrics",
    "ProductUrls",
    "Receiver",
    "ReceiverServer",
    "RealtimeDriver",
    "SandboxAdapter",
    "SandboxServers",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "Suite",
    "Toggles",
    "VirtualClock",
    "load_scenario",
    "mount",
    "parse_scenario",
    "rfc3339",
    "sandbox_session",
    "shipped_scenarios",
    "system_clock",
]
