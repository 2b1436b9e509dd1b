"""`python -m onellm_cli`: the `onellm` command."""

from onellm_cli._app import main

main()
