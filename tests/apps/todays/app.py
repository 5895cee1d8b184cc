"""A new user's first model with today's packages: scikit-learn 1.9.1 has no wheel for Python 3.10.

pip install scikit-learn==1.9.1 triton-repogen
repogen build app.py:models -o repo     # warns: NGC 23.10-24.10 left out; serves 24.11 and later
repogen serve repo                       # picks tritonserver 2.51 + Python 3.12, the containers' Python
repogen infer Iris --input 'x=[[5.1, 3.5, 1.4, 0.2]]'
"""

import numpy as np
from sklearn.linear_model import LogisticRegression

from repogen import ModelConfig, Repository, Tensor, batch

# Four measurements per flower, three species: enough to fit at build time, so the fitted estimator is pickled.
X = np.array(
    [[5.1, 3.5, 1.4, 0.2], [4.9, 3.0, 1.4, 0.2], [7.0, 3.2, 4.7, 1.4], [6.4, 3.2, 4.5, 1.5],
     [6.3, 3.3, 6.0, 2.5], [5.8, 2.7, 5.1, 1.9], [5.0, 3.6, 1.4, 0.2], [5.7, 2.8, 4.1, 1.3]],
    dtype=np.float32,
)  # fmt: skip
Y = np.array([0, 0, 1, 1, 2, 2, 0, 1])
ESTIMATOR = LogisticRegression(max_iter=1000).fit(X, Y)

models = Repository()


@models.model(
    "Iris",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(4,))],
    outputs=[Tensor(name="species", dtype=np.int64, shape=(1,)), Tensor(name="p", dtype=np.float32, shape=(3,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def iris(x):
    return {
        "species": ESTIMATOR.predict(x).astype(np.int64).reshape(-1, 1),
        "p": ESTIMATOR.predict_proba(x).astype(np.float32),
    }
