"""The web app's rooms, one module per tab or concern: ``chat`` (with ``conversations`` and ``uploads``),
``admin`` (with ``llm``), ``evaluate``, ``viewer`` (HTTP routes); ``context`` is what they share.
:func:`ui.app.build_app` composes them."""
