import sys

from sga_core.cli import main

sys.exit(main())
