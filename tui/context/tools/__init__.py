"""Tools in the chat: the definitions a tool file gives, the calls a reply leaves waiting, and the isolated
reviewer's request and verdict. Pure: the controller runs the calls and the review, this says what they are."""
