"""Command-line front end of pymtl-fp (console entry point ``pymtl-fp``)."""
