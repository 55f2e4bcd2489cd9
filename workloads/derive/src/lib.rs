//! `#[derive(ParamDocs)]` for a step's `Params`: the table `prepbench list steps` prints (each
//! parameter's name, kind, default and meaning), read from the struct itself so it cannot drift
//! from it. The name is the field's; the kind comes from its type (`ParamKind`); the meaning is
//! its doc comment; the default is `#[param(default = "...")]`, implied as `none` for an
//! `Option` and `false` for a `bool` with `#[serde(default)]`, and required for any other field
//! with a serde default.

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

/// Whether the field has a serde default (`#[serde(default)]` or `#[serde(default = "...")]`).
fn has_serde_default(attrs: &[syn::Attribute]) -> syn::Result<bool> {
    let mut found = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                found = true;
            }
            if meta.input.peek(syn::Token![=]) {
                let _: Expr = meta.value()?.parse()?;
            }
            Ok(())
        })?;
    }
    Ok(found)
}

/// `#[param(default = "...")]`.
fn param_default(attrs: &[syn::Attribute]) -> syn::Result<Option<String>> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("param")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                let value: syn::LitStr = meta.value()?.parse()?;
                found = Some(value.value());
                Ok(())
            } else {
                Err(meta.error("expected `default = \"...\"`"))
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
        let default = match (
            param_default(&field.attrs)?,
            has_serde_default(&field.attrs)?,
        ) {
            (Some(text), true) => quote!(Some(#text)),
            (Some(_), false) => {
                return Err(syn::Error::new_spanned(
                    ident,
                    "#[param(default)] on a required field: give it #[serde(default ...)] too",
                ))
            }
            (None, true) => match type_name(&field.ty).as_str() {
                "Option" => quote!(Some("none")),
                "bool" => quote!(Some("false")),
                _ => {
                    return Err(syn::Error::new_spanned(
                        ident,
                        "say the default as `list steps` shows it: #[param(default = \"...\")]",
                    ))
                }
            },
            (None, false) => quote!(None),
        };
        let ty = &field.ty;
        docs.push(quote! {
            crate::registry::ParamDoc {
                name: #param,
                kind: <#ty as crate::registry::ParamKind>::KIND,
                default: #default,
                doc: #doc,
            }
        });
    }
    Ok(quote! {
        impl crate::registry::ParamDocs for #name {
            const DOCS: &'static [crate::registry::ParamDoc] = &[#(#docs),*];
        }
    })
}
