"""Builders of the issue-46 answers corpus, one module per kind of document (``build(out_dir, mirrors)``)."""
