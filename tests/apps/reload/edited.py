from repogen import batch


@batch
def edited(x):
    return {"y": x + 1}
