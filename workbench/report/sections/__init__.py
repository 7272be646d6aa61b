"""The report's sections, in the order they appear; each is ``render(ctx, doc)`` over the
shared `ReportContext` and the `Document` being written."""
