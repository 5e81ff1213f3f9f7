import sys
from pathlib import Path

# the helper module next to the tests (the tests directory is not a package)
sys.path.insert(0, str(Path(__file__).parent))
