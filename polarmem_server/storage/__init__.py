"""Storage behind one backend seam: persist and index a namespace's items, search them, read records back."""
