from rigctl.cli import main

raise SystemExit(main())
