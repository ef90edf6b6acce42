"""The lifecycle sample: a web application moved through its phases by okt's lifecycle machine (see README.md).

The operator itself is :mod:`.lifecycle_operator`.
"""
