Feature: login

  @smoke @AUTH-3
  Scenario: signs in
    Given a user

  Scenario Outline: [S12] rejects <input>
    Examples:
      | input |

  - **Scenario:** S1, duplicate
  Scenario: s1 again
  Scenario: no id here
