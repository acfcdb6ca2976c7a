"""Harness of the benchmarks: the machinery every study of ``benchmarks/studies/`` uses.

- :mod:`.study`: a study's declaration (:class:`~.study.Study`), the one run loop over data
  sets x methods x seeds and the long-format record (study, data set, method, seed, metric,
  value, unit, plus context);
- :mod:`.report`: the machine description, JSON results and the one renderer (a pivot of
  the records into RST tables, mean ± spread over seeds);
- :mod:`.registry`: the methods, ours (:mod:`.ours`: fitted once, a forward pass a row) and
  the per-row peers (:mod:`.peers`: shap, LIME, captum);
- :mod:`.data`: the synthetic data sets, their black box and EVAL-X evaluator;
  :mod:`.quality`: how masks are judged against the ground truth; :mod:`.timing`: timings.

:mod:`.anchor`: each amortized method's training as a plain torch loop (the scale study's
reference).
"""
