"""The public pickle scanners' own test cases, rebuilt from declarative recipes.

``recipes.RECIPES`` names each case (its suite, the test it comes from, the
file it is, what loading it calls, and what stcheck must say); ``build``
turns one recipe into bytes.  No scanner's code or data is copied here: each
sample is re-described from what the suite's test builds, and every call a
payload makes is inert (``true``, ``1+1``, ``/dev/null``, or arguments that
fail before anything is done).
"""
