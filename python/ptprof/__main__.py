"""`python -m ptprof run -- ...`: the same as the `ptprof` command."""

import sys

from ptprof._launcher import main

sys.exit(main())
