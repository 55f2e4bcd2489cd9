//! `#[derive(ParamDocs)]` for a step's `Params`: the table `prepbench list steps` prints (each
//! parameter's name, kind, default and meaning), read from the struct itself so it cannot drift
//! from it. The name is the field's; the kind comes from its type (`ParamKind`); the meaning is
//! its doc comment; the default is `#[param(default = "...")]`, implied as `none` for an
//! `Option` and `false` for a `bool` with `#[serde(default)]` and as `NAME` for a field-name
//! helper `default_NAME_field` (whose value the steps' tests check), and required for any
//! other field with a serde default. `#[param(reads)]` and `#[param(writes)]` mark a parameter
//! whose value names a field of the sample the step reads or writes (`READS`, `WRITES`), so
//! that `validate` can follow fields through a pipeline without knowing parameter names.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields, Lit, Meta, Type};

#[proc_macro_derive(ParamDocs, attributes(param))]
pub fn derive_param_docs(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match param_docs(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The doc comment's lines, trimmed and joined with spaces.
fn doc_text(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(l) => match &l.lit {
                    Lit::Str(s) => Some(s.value().trim().to_string()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" ")
}

/// The field's serde default: `None` without one, `Some(None)` for `#[serde(default)]`,
/// `Some(Some(path))` for `#[serde(default = "path")]`.
fn serde_default(attrs: &[syn::Attribute]) -> syn::Result<Option<Option<String>>> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let is_default = meta.path.is_ident("default");
            if meta.input.peek(syn::Token![=]) {
                let value: Expr = meta.value()?.parse()?;
                if let (true, Expr::Lit(l)) = (is_default, &value) {
                    if let Lit::Str(s) = &l.lit {
                        found = Some(Some(s.value()));
                    }
                }
            } else if is_default {
                found = Some(None);
            }
            Ok(())
        })?;
    }
    Ok(found)
}

/// The default a field-name helper implies: `image` for `super::default_image_field`.
fn field_helper_default(path: &str) -> Option<String> {
    let name = path.rsplit("::").next()?;
    let field = name.strip_prefix("default_")?.strip_suffix("_field")?;
    Some(field.to_string())
}

/// What `#[param(...)]` says of a field: its default as `list steps` shows it, and whether its
/// value names a field of the sample the step reads or writes.
#[derive(Default)]
struct ParamAttrs {
    default: Option<String>,
    reads: bool,
    writes: bool,
}

/// `#[param(default = "...", reads, writes)]`.
fn param_attrs(attrs: &[syn::Attribute]) -> syn::Result<ParamAttrs> {
    let mut found = ParamAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("param")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                let value: syn::LitStr = meta.value()?.parse()?;
                found.default = Some(value.value());
                Ok(())
            } else if meta.path.is_ident("reads") {
                found.reads = true;
                Ok(())
            } else if meta.path.is_ident("writes") {
                found.writes = true;
                Ok(())
            } else {
                Err(meta.error("expected `default = \"...\"`, `reads` or `writes`"))
            }
        })?;
    }
    Ok(found)
}

/// The last path segment's name of a type (`Option` for `Option<T>`).
fn type_name(ty: &Type) -> String {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn param_docs(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(name, "ParamDocs is for structs"));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(
            name,
            "ParamDocs needs named fields",
        ));
    };
    let mut docs = Vec::new();
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    for field in &fields.named {
        let ident = field.ident.as_ref().expect("named fields");
        let param = ident.to_string();
        let doc = doc_text(&field.attrs);
        if doc.is_empty() {
            return Err(syn::Error::new_spanned(
                ident,
                "document the parameter: its doc comment is what `list steps` prints",
            ));
        }
        let attrs = param_attrs(&field.attrs)?;
        if attrs.reads {
            reads.push(param.clone());
        }
        if attrs.writes {
            writes.push(param.clone());
        }
        let default =
            match (attrs.default, serde_default(&field.attrs)?) {
                (Some(text), Some(_)) => quote!(Some(#text)),
                (Some(_), None) => {
                    return Err(syn::Error::new_spanned(
                        ident,
                        "#[param(default)] on a required field: give it #[serde(default ...)] too",
                    ))
                }
                (None, Some(path)) => {
                    let implied = match type_name(&field.ty).as_str() {
                        "Option" => Some("none".to_string()),
                        "bool" => Some("false".to_string()),
                        _ => path.as_deref().and_then(field_helper_default),
                    };
                    match implied {
                        Some(text) => quote!(Some(#text)),
                        None => return Err(syn::Error::new_spanned(
                            ident,
                            "say the default as `list steps` shows it: #[param(default = \"...\")]",
                        )),
                    }
                }
                (None, None) => quote!(None),
            };
        let ty = &field.ty;
        docs.push(quote! {
            crate::op::ParamDoc {
                name: #param,
                kind: <#ty as crate::op::ParamKind>::KIND,
                default: #default,
                doc: #doc,
            }
        });
    }
    Ok(quote! {
        impl crate::op::ParamDocs for #name {
            const DOCS: &'static [crate::op::ParamDoc] = &[#(#docs),*];
            const READS: &'static [&'static str] = &[#(#reads),*];
            const WRITES: &'static [&'static str] = &[#(#writes),*];
        }
    })
}
