"""Word lists of our own for the realistic templates (no data is downloaded).

Each template has three entity layers: places (layer 0), member kinds (layer 1) and the items
counted per member (layer 2, Hard only), plus the phrases that name a parameter.
"""

from __future__ import annotations

_PREFIXES = (
    "Riverside", "Maple", "Oakwood", "Sunny Hill", "Pine Valley", "Lakeview", "Cedar Creek", "Bluebell",
    "Silver Lake", "Greenfield", "Hillcrest", "Stonebridge", "Willow Bend", "Northgate", "Eastwood", "Redwood",
    "Brookside", "Golden Gate", "Harbor Point", "Meadowbrook", "Fox Run", "Elmhurst", "Clearwater", "Highland",
    "Westfield", "Ashford", "Birchwood", "Crystal Bay", "Summit", "Lindenwood", "Kingsley", "Fairview",
    "Rosewood", "Thornbury", "Windmill", "Copper Ridge", "Evergreen", "Bayside", "Moonlight", "Starlight",
)

TEMPLATES: dict[str, dict] = {
    "zoo": {
        "places": tuple(f"{p} {s}" for s in ("Zoo", "Wildlife Park", "Safari", "Animal Sanctuary") for p in _PREFIXES),
        "members": (
            "fox", "wolf", "bear", "lion", "tiger", "zebra", "giraffe", "elephant", "hippo", "rhino", "panda",
            "koala", "kangaroo", "otter", "beaver", "raccoon", "badger", "deer", "moose", "bison", "camel",
            "llama", "alpaca", "goat", "sheep", "horse", "donkey", "pig", "rabbit", "squirrel", "hedgehog",
            "meerkat", "lemur", "gorilla", "chimpanzee", "orangutan", "baboon", "jaguar", "leopard", "cheetah",
            "lynx", "cougar", "hyena", "jackal", "coyote", "seal", "walrus", "penguin", "flamingo", "ostrich",
            "emu", "peacock", "parrot", "owl", "eagle", "hawk", "falcon", "vulture", "pelican", "swan",
            "goose", "duck", "crane", "heron", "stork", "toucan", "crocodile", "alligator", "iguana", "tortoise",
            "turtle", "python", "cobra", "frog", "salamander", "armadillo", "anteater", "sloth", "tapir", "yak",
        ),
        "items": (
            "newborn children", "eggs", "keepers", "toys", "blankets", "bowls", "enrichment puzzles", "name tags",
            "visitors", "photos", "medical checkups", "treats", "feathers", "spots", "stripes", "bells",
        ),
        "i01": "the number of adult {b} in {a}",
        "i12": "the average number of {c} per adult {b}",
        "a01": "the total number of adult animals in {a}",
        "a02": "the total number of {c} in {a}",
        "rules": ("Each adult animal in a place is counted by kind. 'The total number of adult animals in P' is the "
                  "sum of the numbers of the adult animals of each kind mentioned in P. 'The total number of C in "
                  "P' is the sum, over the kinds of animal in P, of the number of adults times the average number "
                  "of C per adult of that kind."),
    },
    "school": {
        "places": tuple(f"{p} {s}" for s in ("High School", "Elementary", "Academy", "Middle School")
                        for p in _PREFIXES),
        "members": (
            "math", "physics", "chemistry", "biology", "history", "geography", "art", "music", "drama", "dance",
            "english", "french", "spanish", "german", "latin", "chinese", "japanese", "economics", "law",
            "philosophy", "psychology", "sociology", "astronomy", "geology", "ecology", "robotics", "coding",
            "statistics", "algebra", "geometry", "calculus", "poetry", "writing", "reading", "health",
            "cooking", "woodwork", "sewing", "photography", "painting", "sculpture", "chess", "debate",
            "journalism", "film", "design", "architecture", "gardening", "swimming", "tennis", "soccer",
            "basketball", "volleyball", "athletics", "gymnastics", "yoga", "ethics", "religion", "civics",
        ),
        "items": (
            "students", "backpacks", "textbooks", "lesson plans", "whiteboards", "laptops", "field trips",
            "exams", "notebooks", "awards", "clubs", "projects", "lab coats", "pencils", "posters", "desks",
        ),
        "i01": "the number of {b} teachers in {a}",
        "i12": "the average number of {c} per {b} teacher",
        "a01": "the total number of teachers in {a}",
        "a02": "the total number of {c} in {a}",
        "rules": ("Teachers in a school are counted by subject. 'The total number of teachers in S' is the sum of "
                  "the numbers of teachers of each subject mentioned in S. 'The total number of C in S' is the "
                  "sum, over the subjects in S, of the number of teachers times the average number of C per "
                  "teacher of that subject."),
    },
    "movie": {
        "places": tuple(f"{p} {s}" for s in ("Film Festival", "Movie Awards", "Cinema Week", "Screen Fest")
                        for p in _PREFIXES),
        "members": (
            "comedy", "drama", "thriller", "horror", "romance", "western", "musical", "documentary", "animated",
            "fantasy", "science fiction", "mystery", "crime", "war", "sports", "biography", "adventure",
            "action", "family", "silent", "noir", "superhero", "spy", "disaster", "heist", "road", "teen",
            "historical", "martial arts", "zombie", "monster", "space", "pirate", "samurai", "detective",
            "courtroom", "medical", "political", "dance", "music", "nature", "travel", "cooking", "fashion",
            "art house", "experimental", "short", "mockumentary", "satire", "parody", "slasher", "psychological",
            "epic", "coming of age", "buddy", "caper", "gangster", "legal", "period", "time travel",
        ),
        "items": (
            "awards", "nominations", "reviews", "screenings", "posters", "trailers", "interviews", "premieres",
            "standing ovations", "critics' votes", "audience votes", "press releases", "red carpet guests",
            "encores", "tickets sold in thousands", "fan letters",
        ),
        "i01": "the number of {b} movies at {a}",
        "i12": "the average number of {c} per {b} movie",
        "a01": "the total number of movies at {a}",
        "a02": "the total number of {c} at {a}",
        "rules": ("Movies at a festival are counted by genre. 'The total number of movies at F' is the sum of the "
                  "numbers of movies of each genre mentioned at F. 'The total number of C at F' is the sum, over "
                  "the genres at F, of the number of movies times the average number of C per movie of that "
                  "genre."),
    },
}
