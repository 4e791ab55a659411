"""The domain: vocabulary, text, partitioners and recall planning. Pure logic: no storage, no RPC, no model."""
