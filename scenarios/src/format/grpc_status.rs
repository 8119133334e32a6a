//! gRPC's status codes: one table of their names, each code's number its position in it, as
//! the gRPC spec (`doc/statuscodes.md`, `google/rpc/code.proto`) numbers them. The import of a
//! gRPC service config reads `retryableStatusCodes` through it (a name or a number), and the
//! figures pair each failure reason with the code a gRPC service would answer with from it,
//! so that a name and its number are written once.

/// A gRPC status code: its number, from 0 (`OK`) to 16 (`UNAUTHENTICATED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GrpcCode(u8);

/// Writes the table once: each code a constant named as the spec names it, its number its
/// position in the list, and its name that constant's name.
macro_rules! codes {
    ($($name:ident),* $(,)?) => {
        /// The positions of the codes in the list.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms, dead_code)]
        #[repr(u8)]
        enum Position {
            $($name),*
        }

        /// The codes' names by number.
        const NAMES: &[&str] = &[$(stringify!($name)),*];

        impl GrpcCode {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub const $name: GrpcCode = GrpcCode(Position::$name as u8);
            )*
        }
    };
}

// The spec's order.
codes!(
    OK,
    CANCELLED,
    UNKNOWN,
    INVALID_ARGUMENT,
    DEADLINE_EXCEEDED,
    NOT_FOUND,
    ALREADY_EXISTS,
    PERMISSION_DENIED,
    RESOURCE_EXHAUSTED,
    FAILED_PRECONDITION,
    ABORTED,
    OUT_OF_RANGE,
    UNIMPLEMENTED,
    INTERNAL,
    UNAVAILABLE,
    DATA_LOSS,
    UNAUTHENTICATED,
);

impl GrpcCode {
    /// Every code, by number.
    pub fn all() -> impl Iterator<Item = GrpcCode> {
        (0..NAMES.len() as u8).map(GrpcCode)
    }

    /// The code of `number`, if gRPC has one.
    pub fn from_number(number: u64) -> Option<GrpcCode> {
        u8::try_from(number)
            .ok()
            .filter(|&n| usize::from(n) < NAMES.len())
            .map(GrpcCode)
    }

    /// The code `name` names, in any case (`"UNAVAILABLE"`, `"unavailable"`), as a service
    /// config written for grpc-go may spell it.
    pub fn from_name_ignoring_case(name: &str) -> Option<GrpcCode> {
        NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| GrpcCode(i as u8))
    }

    /// Its name, as the spec writes it (`UNAVAILABLE`).
    pub fn name(self) -> &'static str {
        NAMES[usize::from(self.0)]
    }

    /// Its number (`14`).
    pub fn number(self) -> u8 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::GrpcCode;

    /// The table of gRPC's `doc/statuscodes.md` ("Code", "Number"), written out pair by pair
    /// as the spec lists them: an oracle independent of the order of `NAMES`.
    const SPEC: [(&str, u8); 17] = [
        ("OK", 0),
        ("CANCELLED", 1),
        ("UNKNOWN", 2),
        ("INVALID_ARGUMENT", 3),
        ("DEADLINE_EXCEEDED", 4),
        ("NOT_FOUND", 5),
        ("ALREADY_EXISTS", 6),
        ("PERMISSION_DENIED", 7),
        ("RESOURCE_EXHAUSTED", 8),
        ("FAILED_PRECONDITION", 9),
        ("ABORTED", 10),
        ("OUT_OF_RANGE", 11),
        ("UNIMPLEMENTED", 12),
        ("INTERNAL", 13),
        ("UNAVAILABLE", 14),
        ("DATA_LOSS", 15),
        ("UNAUTHENTICATED", 16),
    ];

    #[test]
    fn every_name_and_number_is_the_specs() {
        let table: Vec<(&str, u8)> = GrpcCode::all().map(|c| (c.name(), c.number())).collect();
        assert_eq!(table, SPEC);
        for (name, number) in SPEC {
            let by_number = GrpcCode::from_number(u64::from(number)).expect(name);
            assert_eq!(by_number.name(), name);
            let by_name = GrpcCode::from_name_ignoring_case(&name.to_lowercase()).expect(name);
            assert_eq!(by_name.number(), number);
        }
        assert_eq!(GrpcCode::from_number(17), None);
        assert_eq!(GrpcCode::from_number(256 + 14), None);
        assert_eq!(GrpcCode::from_name_ignoring_case("UNAVAILABLE_"), None);
    }

    #[test]
    fn the_named_constants_are_the_codes_of_their_names() {
        let constants = [
            (GrpcCode::OK, "OK"),
            (GrpcCode::CANCELLED, "CANCELLED"),
            (GrpcCode::UNKNOWN, "UNKNOWN"),
            (GrpcCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"),
            (GrpcCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"),
            (GrpcCode::NOT_FOUND, "NOT_FOUND"),
            (GrpcCode::ALREADY_EXISTS, "ALREADY_EXISTS"),
            (GrpcCode::PERMISSION_DENIED, "PERMISSION_DENIED"),
            (GrpcCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"),
            (GrpcCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"),
            (GrpcCode::ABORTED, "ABORTED"),
            (GrpcCode::OUT_OF_RANGE, "OUT_OF_RANGE"),
            (GrpcCode::UNIMPLEMENTED, "UNIMPLEMENTED"),
            (GrpcCode::INTERNAL, "INTERNAL"),
            (GrpcCode::UNAVAILABLE, "UNAVAILABLE"),
            (GrpcCode::DATA_LOSS, "DATA_LOSS"),
            (GrpcCode::UNAUTHENTICATED, "UNAUTHENTICATED"),
        ];
        for (code, name) in constants {
            assert_eq!(code.name(), name);
        }
    }
}
