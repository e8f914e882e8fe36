//! The campaign plan read from `state/campaign.json`.

use serde::Deserialize;

use crate::error::{Error, Result};

#[derive(Deserialize, Debug, Clone)]
pub struct Scenario {
    pub id: String,
    pub title: String,
    pub given: String,
    pub then: String,
}

#[derive(Deserialize, Debug, Clone)]
pub struct Child {
    pub title: String,
    pub description: String,
    pub scenarios: Vec<String>,
    pub files: Vec<String>,
    #[serde(default)]
    pub depends_on: Vec<usize>,
}

#[derive(Deserialize, Debug, Clone)]
pub struct Plan {
    pub title: String,
    pub description: String,
    pub autonomy: String,
    pub target: String,
    pub suite_cmd: String,
    pub test_paths: Vec<String>,
    pub scenarios: Vec<Scenario>,
    pub children: Vec<Child>,
}

impl Plan {
    pub fn embedded() -> Result<Plan> {
        serde_json::from_str(super::files::CAMPAIGN)
            .map_err(|e| Error::bad_file("state/campaign.json", e.to_string()))
    }

    pub fn scenario(&self, id: &str) -> Option<&Scenario> {
        self.scenarios
            .iter()
            .find(|s| s.id.eq_ignore_ascii_case(id))
    }

    /// A Gherkin scenario block for `id`.
    pub fn gherkin(&self, id: &str) -> String {
        match self.scenario(id) {
            Some(s) => format!(
                "  Scenario: {} {}\n    Given {}\n    Then {}\n",
                s.id, s.title, s.given, s.then
            ),
            None => format!("  Scenario: {id}\n"),
        }
    }
}
