"""``python -m fedtrain.figures NAME``: write one of the book's figures (:func:`fedtrain.figures.catalogue.main`)."""
from fedtrain.figures.catalogue import main

if __name__ == "__main__":
    raise SystemExit(main())
