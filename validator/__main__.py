from validator.cli.main import main

__all__: list[str] = []

raise SystemExit(main())
