//! `grammar-xform` — being written (issue 2).
