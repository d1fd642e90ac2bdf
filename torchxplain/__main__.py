"""``python -m torchxplain``: the ``torchxplain`` command."""

from torchxplain.cli import main

raise SystemExit(main())
