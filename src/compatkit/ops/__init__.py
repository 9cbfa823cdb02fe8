"""The use cases, between the model and engine below and the commands above.

Each module here is one use case (apply, revert, verify, status, smoke, upstream, project,
prove, matrix): plain typed parameters in, a typed result out, its states from
:mod:`compatkit.model.results` (one enum per domain), CompatkitError for an expected failure.
Nothing here prints. A command (``compatkit.cli.commands.<verb>``) calls one or more of them
and renders the result; the pytest plugin, ``matrix`` and ``prove`` call operations too, never
a command (docs/architecture.md).
"""
