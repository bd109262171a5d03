from validator._cli import main

raise SystemExit(main())
