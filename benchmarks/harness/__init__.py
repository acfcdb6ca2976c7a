"""Harness for the benchmarks: black boxes, explainers, per-row peers, metrics and reports.

For every synthetic data set the harness trains one black box (an sklearn MLP) on sampled
labels, then asks each method of the registry (:mod:`.registry`) to explain the same
held-out rows of that model:

- ours (the amortized explainers of ``sk_sointer``) are fitted once on the training rows
  and the black box, then explain by a forward pass of their selector (:mod:`.ours`);
- the per-row peers (shap's KernelExplainer, LIME, captum's Saliency, IntegratedGradients
  and KernelShap on a torch copy of the MLP) explain each row from scratch; their mask is
  the top-k of ``|attribution|`` (:mod:`.peers`).

Every mask is judged the same way (:mod:`.quality`): agreement with the ground truth (L2X's
median rank, INVASE's TPR / FDR, REAL-X's control-flow selection rate), post-hoc accuracy of
the black box on masked rows and EVAL-X's eACC from one evaluator per data set. Times are
measured in the same run (:mod:`.timing`): fit seconds, explanation milliseconds per row,
and for our explainers the throughput of ``transform`` relative to a bare forward pass of
the selector network (the cost of the scikit-learn wrapper).

:mod:`.run` runs the (data set, method) pairs, recording a failing method with an ``error``
field and going on; :mod:`.report` saves the records as JSON and renders the README table.

:mod:`.structured` is SOInter's benchmark: one output of a multi-label black box (SOInter's
E1 and E2, and yeast) explained by SOInter, by L2X and the peers on that output alone.

:mod:`.tables` is the real-tables benchmark: tables that ship with scikit-learn and river,
everyday black boxes, our explainers against the best global subset, KernelSHAP, LIME and a
per-row greedy search, all judged by the fidelity ``score`` measures.
"""
