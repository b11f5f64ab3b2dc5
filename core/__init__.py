"""The foundation every stage stands on: settings, model provisioning, the data directory's writer lock and the
bench-format questions. It imports no stage (``ingest``, ``retrieval``, ``router``) and nothing above them
(answering, evaluation, the CLI, the UI); ``tests/test_layers.py`` checks that."""
