"""``python -m fedtrain.figures NAME``: write one of the book's figures (:func:`fedtrain.figures.catalogue.main`)."""
from fedtrain.figures.catalogue import main

raise SystemExit(main())
