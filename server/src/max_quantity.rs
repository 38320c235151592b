//! Maxima as the flags write them (`--max-tenant-memory 32Gi`): a Kubernetes quantity, more
//! than zero, kept with its text for the messages that name it.

use std::{fmt, str::FromStr};

use kubespaces_api::quantity::{self, Nanos};

/// A maximum from the command line: its text (for messages) and its exact value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaxQuantity {
    text: String,
    value: Nanos,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MaxQuantityError {
    #[error(transparent)]
    Quantity(#[from] quantity::QuantityError),
    #[error("{0:?} is not more than zero: leave the flag out for no limit")]
    NotPositive(String),
}

impl FromStr for MaxQuantity {
    type Err = MaxQuantityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let value = quantity::parse(text)?;
        if !value.is_positive() {
            return Err(MaxQuantityError::NotPositive(text.to_owned()));
        }
        Ok(MaxQuantity {
            text: text.trim().to_owned(),
            value,
        })
    }
}

impl MaxQuantity {
    /// The exact value.
    pub fn value(&self) -> Nanos {
        self.value
    }
}

impl fmt::Display for MaxQuantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxima_must_be_positive_quantities() {
        assert_eq!("16Gi".parse::<MaxQuantity>().unwrap().to_string(), "16Gi");
        assert!(matches!(
            "0".parse::<MaxQuantity>(),
            Err(MaxQuantityError::NotPositive(_))
        ));
        assert!(matches!(
            "-1".parse::<MaxQuantity>(),
            Err(MaxQuantityError::NotPositive(_))
        ));
        assert!(matches!(
            "lots".parse::<MaxQuantity>(),
            Err(MaxQuantityError::Quantity(_))
        ));
    }
}
