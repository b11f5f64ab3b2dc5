"""Where chunks live: the vector index, the catalog of documents, their consistency and export."""
