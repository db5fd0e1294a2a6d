"""The language model side: loading (embedded models, hub ids, folders), encoding rows into
labelled sequences, the losses, and the batched forward passes."""
