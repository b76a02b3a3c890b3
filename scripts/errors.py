"""The one exception type the CLI turns into a one-line error message."""


class UserError(Exception):
    """Input a user can fix: a bad option, a malformed file, a missing tool.

    Library code raises ``ValueError``/``TypeError`` subclasses of its own; command modules
    convert them to ``UserError`` at the boundary so the CLI prints one line, no traceback.
    """
