"""Pure rules, one subpackage per kind family: ``slices``, ``claims``, ``scheduling``.

Each kind module exports one typed record, ``RULES`` (``webhook.rules.kind.KindRules``: served
versions, scope, plural, apply_defaults, mutate, validate, validate_update, warnings,
state_warnings, whether feasibility and capacity defaulting apply); ``webhook.rules.registry``
maps (group, kind) to it. ``shape`` is the one vocabulary for JSON-shape errors, ``names`` the
Kubernetes name syntaxes, ``context`` what a rule may know about the request.

Rules never import Flask or kubernetes, never touch the network and never raise on user input.
"""
