"""`python -m vlk_memact` is the `vlk-memact` command."""

from .entry import main

raise SystemExit(main())
