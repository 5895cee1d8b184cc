
@models.model(
    "Shift",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def shift(x):
    return {"y": x + OFFSET}
