"""`python -m polarmem_server.faces.cli ...` runs the `polarmem` command."""

import sys

from polarmem_server.faces.cli import main

sys.exit(main())
