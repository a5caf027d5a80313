"""Smoke test of the installed wheel on an older processor: python/ci.sh runs this under
`qemu-x86_64 -cpu Nehalem` (x86-64-v2: SSE4.2, no AVX), where a wheel built for the building
machine's features dies there of an illegal instruction (the workspace's native build of the
`dpml` command does: checked by hand).
Not collected by pytest (no test_ prefix): it is a script.
"""

import numpy as np

import dpml

X = np.random.default_rng(0).uniform(-1, 1, size=(5000, 4))
y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no")
clf = dpml.LogisticRegression(epsilon=0.5, data_norm=2.0, classes=["no", "yes"]).fit(X, y)
score = clf.score(X, y)
assert score > 0.8, score
print("linear score", score, clf.privacy_["mechanism"])
k = dpml.RandomFeaturesSVC(epsilon=1.0, classes=["no", "yes"]).fit(X / 2.0, y)
score = k.score(X / 2.0, y)
assert score > 0.8, score
print("kernel score", score)
