"""`python -m webhook` is the `dra-webhook` command."""

from webhook.cli import main

raise SystemExit(main())
