from stages.tools.cli import main

raise SystemExit(main())
