from validator.cli.main import main

raise SystemExit(main())
