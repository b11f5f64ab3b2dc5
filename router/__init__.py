"""Mix-of-Granularity router (MoG, seed 002): per-question weights of the granularity levels.

``model`` (RouterConfig, the MLP, save/load and the compatibility check), ``labels`` (soft labels, pure),
``data`` (questions files, the fixed split, the corpus read back from an index), ``train`` (BCE, Adam, early
stopping, loss PNG), ``encoders`` (RoBERTa, mean pooled), ``runtime`` (which router serves a query),
``pipeline`` (``mgrag train-router``). Nothing heavy is imported here.
"""
