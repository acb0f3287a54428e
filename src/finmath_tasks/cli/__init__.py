"""The ``finmath`` console script: ``grid``, ``report``, ``export`` (see ``main.py``)."""
