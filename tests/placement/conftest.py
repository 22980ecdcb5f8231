import sys
from pathlib import Path

# Placement's tests need only the repository root on the path: no settings, no database.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
