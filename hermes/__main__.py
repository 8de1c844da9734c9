"""``python -m hermes`` is the ``hermes`` command."""

from hermes.cli import main

main()
