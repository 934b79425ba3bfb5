"""`python -m vlk_memact` is the `vlk-memact` command."""

from .cli import main

raise SystemExit(main())
