# Sphinx configuration of the gpufabric.rdma docs site (`make docs`).
# The collection reference is written by antsibull-docs from the ansible-doc documentation of
# every module, filter and role; the guides are the Markdown pages under docs/ read by MyST.
# The build runs offline, so nothing is fetched from other sites' inventories: references to
# ansible-core's pages resolve to ansible-labels.rst, which links out.

project = 'gpufabric.rdma'
copyright = 'gpufabric.rdma contributors'
title = 'gpufabric.rdma documentation'
html_short_title = 'gpufabric.rdma'

extensions = ['sphinx_antsibull_ext', 'myst_parser']
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
myst_heading_anchors = 3

pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

default_role = 'any'
nitpicky = True
