"""What the explainers' training shares: the skorch net base, its steps and their CUDA
graphs, index batching, the random-mask objective, the refinement against the model and the
epoch progress. It sits below the estimators: ``base.py``, the methods in ``explainers/``
and the metrics import it; it imports none of them."""
