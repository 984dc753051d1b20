"""TreeRAG engine: tree-routed hybrid retrieval over long structured documents (no Streamlit)."""

import warnings

# milvus-lite 2.5 (the Milvus engine the tests start) imports pkg_resources, so setuptools < 81
# is installed; jieba then imports it too, and setuptools warns on every such import that the
# API is deprecated. Nothing here uses it: the warning would only be noise on stderr.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
