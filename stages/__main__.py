from stages.harness.cli import main

raise SystemExit(main())
