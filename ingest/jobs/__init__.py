"""Ingestion jobs: their states, the durable queue, workers local and remote."""
