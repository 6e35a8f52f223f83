"""Procedural English training text for the demo model: children's stories, chats, Q&A.

Core idea: a small story grammar (characters, places, objects, a dozen plot shapes with
several phrasings per step, dialogue and endings) produces TinyStories-like text, and fact
tables produce short question/answer exchanges. Everything is drawn from one seeded
random.Random, so the corpus is identical for a given seed, with no download and no licence
question.

A document is a list of segments: plain strings, or Special("<|user|>")-style control tokens,
so chat turns can be rendered exactly as the GGUF chat template renders them.
"""

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Special:
    text: str


# Chat template embedded in the GGUF (tokenizer.chat_template). Control tokens <|system|>,
# <|user|>, <|assistant|> and </s> (EOS) are single tokens; no newlines, so that the text
# after each control token tokenizes the same way in training and at inference.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('roles must be system, user or assistant') }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] | trim + '</s>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)

ROLE_TOKENS = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>"}
EOS = "</s>"

# Few names, so that each is seen often enough for a tiny model to keep characters straight.
GIRLS = ["Lily", "Mia", "Sue", "Anna", "Zoe", "Emma", "Lucy", "Kim", "Rosa", "Sara", "Amy",
         "Ella", "Molly", "Daisy", "Jane", "Ruby"]
BOYS = ["Tim", "Sam", "Ben", "Max", "Tom", "Leo", "Jack", "Bob", "Finn", "Joe", "Dan", "Alex",
        "Jake", "Noah", "Luke", "Peter"]

# kind -> (is_person, sound or None)
KINDS = {
    "girl": (True, None), "boy": (True, None), "robot": (False, "beep"),
    "cat": (False, "meow"), "dog": (False, "woof"), "bunny": (False, None),
    "bird": (False, "tweet"), "dragon": (False, "roar"), "bear": (False, "growl"),
    "fox": (False, None), "mouse": (False, "squeak"), "frog": (False, "ribbit"),
    "duck": (False, "quack"), "owl": (False, "hoot"), "turtle": (False, None),
    "lion": (False, "roar"), "pig": (False, "oink"), "horse": (False, "neigh"),
    "elephant": (False, None), "monkey": (False, None), "squirrel": (False, None),
    "puppy": (False, "woof"), "kitten": (False, "meow"), "fish": (False, None),
    "bee": (False, "buzz"), "sheep": (False, "baa"), "cow": (False, "moo"),
}
ANIMAL_KINDS = [k for k, (person, _) in KINDS.items() if not person]

ADJS = ["little", "small", "big", "happy", "curious", "brave", "kind", "shy", "silly",
        "friendly", "clever", "sleepy", "funny", "gentle", "young", "tiny", "cheerful", "busy",
        "playful", "quiet"]
TRAITS = ["kind", "brave", "curious", "happy", "friendly", "clever", "helpful", "gentle",
          "funny", "polite", "careful", "cheerful"]

PLACES = ["park", "forest", "garden", "beach", "farm", "town", "castle", "pond", "hill",
          "school", "zoo", "river", "meadow", "library", "market", "village", "lake",
          "playground", "woods", "field", "jungle", "city"]
HOMES = ["small house", "big house", "little town", "quiet village", "green forest",
         "sunny farm", "tall castle", "busy city", "cozy house", "little village"]
PLACE_SPOTS = {
    "park": ["near the big tree", "by the swings", "on a bench"],
    "forest": ["under a tall tree", "by a big rock", "near a little stream"],
    "garden": ["among the flowers", "by the fence", "under a rose bush"],
    "beach": ["on the sand", "near the water", "by a big rock"],
    "farm": ["near the barn", "by the fence", "in the hay"],
    "town": ["near the shop", "by the fountain", "on the corner"],
    "castle": ["by the gate", "in the tower", "near the wall"],
    "pond": ["on a lily pad", "by the water", "in the tall grass"],
    "hill": ["at the top of the hill", "under a big tree", "on the soft grass"],
    "school": ["in the yard", "by the door", "near the slide"],
    "zoo": ["near the gate", "by the pond", "under a tree"],
    "river": ["by the water", "on a rock", "under the bridge"],
    "meadow": ["in the tall grass", "among the flowers", "under the sun"],
    "library": ["by the window", "between the shelves", "in a corner"],
    "market": ["near a fruit stand", "by a cart", "under a tent"],
    "village": ["by the well", "near the bakery", "on the road"],
    "lake": ["by the water", "on the dock", "near the boats"],
    "playground": ["by the slide", "on the swings", "in the sandbox"],
    "woods": ["under a tree", "by a log", "near a bush"],
    "field": ["in the grass", "by the fence", "under the sun"],
    "jungle": ["under a big leaf", "by a tall tree", "near a vine"],
    "city": ["near a shop", "in a small park", "by the road"],
}
COLORS = ["red", "blue", "green", "yellow", "pink", "purple", "orange", "white", "black",
          "brown", "shiny", "soft"]
TOYS = ["ball", "kite", "teddy bear", "toy car", "doll", "hat", "book", "drum", "toy boat",
        "blanket", "scarf", "box", "train", "robot toy", "crayon", "bucket", "balloon"]
FOODS = ["apple", "cake", "cookie", "sandwich", "pie", "banana", "orange", "cupcake", "carrot",
         "pizza", "muffin", "pear", "bowl of berries", "piece of bread"]
HOBBIES = ["play with {his} ball", "run in the park", "sing songs", "read books",
           "look at the stars", "build things with blocks", "paint pictures", "dance",
           "help {his} mom", "ride {his} bike", "play in the garden", "climb trees",
           "jump in puddles", "draw pictures", "swim in the lake", "play games with friends",
           "watch the birds", "pick flowers", "bake cookies", "play hide and seek",
           "splash in the water", "fly {his} kite", "collect shiny rocks", "tell jokes"]
GAMES = ["tag", "hide and seek", "ball", "catch", "with blocks", "in the sand",
         "jump rope", "with the kite", "a fun game", "in the leaves"]
MENTORS = ["mom", "dad", "grandma", "grandpa", "teacher", "big sister", "big brother"]
SKILLS = [
    ("ride a bike", "fell off the bike", "rode the bike all the way down the road"),
    ("fly a kite", "could not get the kite up in the air", "flew the kite high in the sky"),
    ("climb the big tree", "slipped and fell on the grass", "climbed to the top of the tree"),
    ("swim", "splashed and swallowed some water", "swam across the pond"),
    ("bake a cake", "made a big mess in the kitchen", "baked a yummy cake"),
    ("read a book", "did not know all the words", "read the whole book"),
    ("jump over the puddle", "landed in the water with a big splash",
     "jumped over the puddle"),
    ("draw a cat", "drew something that looked like a potato", "drew a very nice cat"),
    ("build a sand castle", "watched the waves knock it down", "built a tall sand castle"),
    ("tie {his} shoes", "got the laces all tangled", "tied {his} shoes all by {himself}"),
    ("whistle", "only made a funny sound", "whistled a happy song"),
    ("catch a ball", "dropped the ball", "caught the ball with both hands"),
]
STUCK = [
    ("up in a tall tree", "climbed up carefully and helped {F} down"),
    ("in a deep hole", "found a long stick and helped {F} climb out"),
    ("in a thorny bush", "moved the branches very gently so {F} could get out"),
    ("under a heavy log", "pushed the log with all {his} might"),
    ("on the other side of the river", "found a big leaf and made a little boat"),
    ("in a muddy puddle", "pulled {F} out of the mud"),
    ("behind a big rock", "rolled the rock away"),
]
FIND_SPOTS = ["under the bed", "behind the door", "in the toy box", "under the table",
              "in the garden", "behind the couch", "under a pillow", "in the closet"]
FOUND_SPOTS = ["under a big leaf", "behind a tree", "in the grass", "next to the door",
               "under the chair", "in a basket", "on top of the shelf", "by the window"]
TREASURES = ["a shiny gold coin", "a pretty blue stone", "an old map", "a tiny key",
             "a little music box", "a bag of colorful marbles", "a sparkly crown",
             "a letter from a friend"]
MYSTERY = ["box", "bottle", "chest", "basket", "shell", "bag"]
SIGHTS = ["big trees and pretty flowers", "birds flying in the sky", "a rainbow after the rain",
          "fish jumping in the water", "butterflies dancing in the air",
          "tall hills and green grass", "clouds shaped like animals"]
GIFTS = [("card", "paper and crayons"), ("necklace", "beads and string"),
         ("crown", "paper and glue"), ("picture", "paints and a brush"),
         ("cake", "flour, eggs and sugar"), ("little boat", "sticks and leaves"),
         ("song", "happy words")]
FEELINGS_GOOD = ["happy", "proud", "glad", "excited", "joyful"]


def article(word):
    return "an" if word[0] in "aeiou" else "a"


def cap(s):
    return s[0].upper() + s[1:] if s else s


class Character:
    def __init__(self, rng, kind=None, name=None, avoid=()):
        self.kind = kind or rng.choice(
            ["girl", "boy"] * 6 + ANIMAL_KINDS if rng.random() < 0.9 else ANIMAL_KINDS)
        if self.kind == "girl":
            female = True
        elif self.kind == "boy":
            female = False
        else:
            female = rng.random() < 0.5
        if name is None:
            pool = [n for n in (GIRLS if female else BOYS) if n not in avoid]
            name = rng.choice(pool)
        self.name = name
        self.female = female
        self.adj = rng.choice(ADJS)
        self.he = "she" if female else "he"
        self.his = "her" if female else "his"
        self.him = "her" if female else "him"
        self.himself = "herself" if female else "himself"

    def fill(self, s, **extra):
        return s.format(name=self.name, he=self.he, his=self.his, him=self.him,
                        himself=self.himself, He=cap(self.he), His=cap(self.his),
                        kind=self.kind, **extra)

    def a_desc(self):
        return f"{article(self.adj)} {self.adj} {self.kind}"


class StoryWriter:
    """Builds one story as a list of sentences."""

    def __init__(self, rng):
        self.rng = rng

    def pick(self, xs):
        return self.rng.choice(xs)

    def chance(self, p):
        return self.rng.random() < p

    # ---- pieces --------------------------------------------------------------------------

    def opening(self, c):
        r = self.rng.random()
        desc = c.a_desc()
        if r < 0.55:
            if self.chance(0.3):
                home = self.pick(HOMES)
                return f"Once upon a time, in {article(home)} {home}, there lived {desc} named {c.name}."
            return f"Once upon a time, there was {desc} named {c.name}."
        if r < 0.65:
            return f"One day, {desc} named {c.name} woke up early."
        if r < 0.75:
            return f"There was once {desc} called {c.name}."
        if r < 0.85:
            return f"Long ago, there was {desc} named {c.name}."
        if r < 0.93:
            return f"{c.name} was {desc}."
        return f"Once there was {desc} named {c.name} who lived in {article(self.pick(HOMES))} {self.pick(HOMES)}."

    def trait(self, c):
        r = self.rng.random()
        if r < 0.45:
            return c.fill("{He} liked to " + self.pick(HOBBIES) + ".")
        if r < 0.65:
            return c.fill("{He} loved to " + self.pick(HOBBIES) + " every day.")
        trait = self.pick([t for t in TRAITS if t != c.adj])
        if r < 0.85:
            return c.fill("{name} was very " + trait + ".")
        return c.fill("Everyone in the " + self.pick(PLACES) + " knew {name} was " + trait + ".")

    def friend(self, c):
        return Character(self.rng, avoid=(c.name,))

    def said(self, speaker_name, line, verb=None):
        verb = verb or self.pick(["said", "said", "said", "asked" if line.endswith("?") else "said",
                                  "replied", "shouted" if line.endswith("!") else "said"])
        if self.chance(0.7):
            return f'"{line}" {verb} {speaker_name}.'.replace('." said', '," said').replace(
                '." replied', '," replied').replace('." shouted', '," shouted').replace(
                '." asked', '," asked')
        return f'{speaker_name} {verb}, "{line}"'

    # ---- plots ---------------------------------------------------------------------------

    def plot_lost(self, c):
        toy, color = self.pick(TOYS), self.pick(COLORS)
        f = self.friend(c)
        s = [c.fill("{name} had " + article(color) + f" {color} {toy}. {{He}} loved it very much.")]
        s.append(c.fill(f"One day, {{name}} could not find {{his}} {toy}."))
        a, b = self.rng.sample(FIND_SPOTS, 2)
        s.append(c.fill(f"{{He}} looked {a}. {{He}} looked {b}. But the {toy} was not there."))
        s.append(c.fill("{name} felt " + self.pick(["sad", "very sad", "worried", "upset"]) + "."))
        s.append(f"Then {c.his} friend {f.name} the {f.kind} came by.")
        s.append(self.said(f.name, f"Why are you sad, {c.name}?", "asked"))
        s.append(self.said(c.name, f"I lost my {color} {toy}."))
        s.append(self.said(f.name, self.pick(["Don't worry. I will help you find it.",
                                             "Let's look for it together!",
                                             "I can help you. Two friends can look better than one."])))
        found = self.pick(FOUND_SPOTS)
        s.append(f"They looked everywhere together. At last, {f.name} found the {toy} {found}.")
        s.append(self.said(c.name, f"Thank you, {f.name}! You are a good friend."))
        s.append(c.fill(f"{{He}} gave {f.name} a big hug."))
        end = self.pick([
            c.fill("From that day on, {name} always put {his} " + toy + " in a safe place."),
            f"{c.name} and {f.name} played with the {toy} until the sun went down.",
            c.fill("{name} was so happy to have {his} " + toy + " back."),
        ])
        s.append(end)
        return s

    def plot_new_friend(self, c):
        place = self.pick(PLACES)
        f = self.friend(c)
        spot = self.pick(PLACE_SPOTS[place])
        s = [c.fill(f"One day, {{name}} went to the {place}.")]
        s.append(c.fill(f"There, {{he}} saw {f.a_desc()} sitting alone {spot}."))
        s.append(f"The {f.kind} looked " + self.pick(["sad", "lonely", "very sad"]) + ".")
        s.append(self.said(c.name, f"Hello! My name is {c.name}. What is your name?"))
        s.append(self.said(f.name, f"I am {f.name}. I have no friends to play with."))
        s.append(self.said(c.name, self.pick(["You can play with me!", "I will be your friend!",
                                             "Do you want to play with me?"])))
        s.append(f"{f.name} smiled. They played {self.pick(GAMES)} all day long.")
        if KINDS[f.kind][1] and self.chance(0.5):
            snd = KINDS[f.kind][1]
            s.append(f'"{cap(snd)}, {snd}!" said {f.name} happily.')
        s.append(self.pick([
            f"{c.name} and {f.name} became best friends.",
            f"From that day on, {c.name} and {f.name} played together every day.",
            f"When the sun went down, they said goodbye and went home happy.",
        ]))
        return s

    def plot_skill(self, c):
        want, fail, ok = (c.fill(x) for x in self.pick(SKILLS))
        mentor = self.pick(MENTORS)
        s = [c.fill(f"{{name}} wanted to {want}.")]
        s.append(c.fill(f"But it was hard. The first time, {{he}} {fail}."))
        s.append(c.fill("{name} felt sad and wanted to give up."))
        s.append(c.fill(f"{{His}} {mentor} said, \"Don't give up. Try again!\""))
        s.append(c.fill("So {name} tried again, and again, and again."))
        s.append(c.fill(f"At last, {{he}} {ok}!"))
        s.append(self.said(c.name, "I did it!", "shouted"))
        s.append(c.fill(f"{{His}} {mentor} was very proud of {{him}}."))
        s.append(self.pick([
            c.fill("{name} learned that if you keep trying, you can do hard things."),
            c.fill("{name} felt " + self.pick(FEELINGS_GOOD) + ". Trying again was the right thing to do."),
        ]))
        return s

    def plot_share(self, c):
        food = self.pick(FOODS)
        f = self.friend(c)
        s = [c.fill(f"One day, {{name}} had {article(food)} {food}. It looked very yummy.")]
        s.append(f"{f.name} the {f.kind} came and looked at the {food}. {f.name} was very hungry.")
        if self.chance(0.5):
            s.append(c.fill("At first, {name} did not want to share."))
            s.append(c.fill("But then {he} saw how hungry " + f.name + " was."))
        s.append(c.fill(f"{{name}} gave half of the {food} to {f.name}."))
        s.append(self.said(f.name, f"Thank you, {c.name}! You are very kind."))
        s.append(f"They ate the {food} together under a big tree.")
        s.append(self.pick(["Sharing made them both happy.",
                            f"{c.name} learned that sharing is caring.",
                            f"The {food} tasted even better when they shared it."]))
        return s

    def plot_rescue(self, c):
        place = self.pick(PLACES)
        f = Character(self.rng, kind=self.pick(ANIMAL_KINDS), avoid=(c.name,))
        where, action = self.pick(STUCK)
        s = [c.fill(f"One day, {{name}} was walking in the {place}.")]
        s.append(c.fill("{He} heard a small voice. \"Help! Help!\""))
        s.append(f"It was a little {f.kind} named {f.name}. {f.name} was stuck {where}.")
        s.append(self.said(c.name, "Don't be scared. I will help you!"))
        s.append(c.fill("{name} " + action.format(F=f.name, his=c.his) + "."))
        s.append(self.said(f.name, "Thank you for helping me!"))
        s.append(self.pick([
            c.fill("{name} felt warm inside. Helping others made {him} happy."),
            f"After that, {f.name} and {c.name} were good friends.",
            f"{f.name} gave {c.name} a little flower to say thank you.",
        ]))
        return s

    def plot_storm(self, c):
        mentor = self.pick(["mom", "dad", "grandma", "grandpa"])
        they = "she" if mentor in ("mom", "grandma") else "he"
        s = ["One night, there was a big storm. The wind was loud and the rain fell hard."]
        s.append(c.fill("{name} was scared. {He} hid under {his} blanket."))
        s.append(c.fill(f"{{His}} {mentor} came into the room."))
        s.append(f'"Don\'t be scared. The storm will go away soon," {they} said.')
        s.append(c.fill(f"{cap(they)} sang a soft song and gave {{name}} a warm hug."))
        s.append(c.fill("Soon the storm was gone and {name} fell asleep."))
        s.append(self.pick([
            c.fill("In the morning, the sun was shining and {name} was not scared anymore."),
            c.fill("{name} learned that storms are loud, but they do not last forever."),
        ]))
        return s

    def plot_treasure(self, c):
        place = self.pick(PLACES)
        companion = self.pick(MENTORS + ["friend " + self.friend(c).name])
        thing = self.pick(MYSTERY)
        treasure = self.pick(TREASURES)
        s = [c.fill(f"One sunny day, {{name}} and {{his}} {companion} went to the {place}.")]
        s.append(f"They saw {self.pick(SIGHTS)}.")
        s.append(f"Then {c.name} found an old {thing} {self.pick(PLACE_SPOTS[place])}.")
        s.append(self.said(c.name, f"What is in this {thing}?", "asked"))
        s.append(f"They opened it together. Inside, there was {treasure}!")
        s.append(c.fill("{name} was very " + self.pick(FEELINGS_GOOD) + "."))
        s.append(self.pick([
            c.fill("{He} took it home and kept it in a special place."),
            c.fill("{He} showed it to all {his} friends, and they were amazed."),
            f"It was the best day at the {place} ever.",
        ]))
        return s

    def plot_gift(self, c):
        f = self.friend(c)
        gift, material = self.pick(GIFTS)
        s = [f"Today was {f.name}'s birthday. {c.name} wanted to give {f.name} a special gift."]
        s.append(c.fill(f"{{He}} made {article(gift)} {gift} with {material}."))
        s.append(c.fill(f"It took a long time, but {{he}} did not stop until it was done."))
        s.append(f"{c.name} gave the {gift} to {f.name}.")
        s.append(self.said(f.name, f"I love it! This is the best gift ever!"))
        s.append(f"{f.name} and {c.name} had a fun party with cake and games.")
        s.append(self.pick([
            f"{c.name} learned that a gift made with love is the best gift of all.",
            f"It was a happy day for everyone.",
        ]))
        return s

    def plot_listen(self, c):
        mentor = self.pick(["mom", "dad"])
        danger = self.pick([("play near the river", "slipped and fell into the cold water",
                             "got all wet"),
                            ("climb on the table", "fell down and hurt {his} knee", "cried"),
                            ("eat too many sweets", "got a big tummy ache", "had to lie down"),
                            ("go out in the rain without a coat", "got very cold", "started to sneeze")])
        s = [c.fill(f"{{His}} {mentor} said, \"{{name}}, please do not {danger[0]}.\"")]
        s.append(c.fill("But {name} did not listen."))
        s.append(c.fill("{He} " + danger[1] + ". {He} " + danger[2] + "."))
        s.append(c.fill(f"{{His}} {mentor} came quickly and helped {{him}}."))
        s.append(self.said(c.name, f"I am sorry, {mentor}. I will listen next time."))
        s.append(c.fill(f"{{His}} {mentor} smiled and gave {{him}} a hug."))
        s.append(c.fill("From that day on, {name} always listened to {his} " + mentor + "."))
        return s

    def plot_snow(self, c):
        f = self.friend(c)
        s = [c.fill("One morning, {name} looked out of the window. Everything was white with snow!")]
        s.append(c.fill("{He} put on {his} warm coat and {his} " + self.pick(COLORS) + " hat."))
        s.append(f"Outside, {c.name} met {f.name} the {f.kind}.")
        s.append(self.said(f.name, "Let's build a snowman!"))
        s.append("They rolled a big ball of snow, then a small one for the head.")
        s.append(f"They gave the snowman a carrot nose and two little stones for eyes.")
        s.append(self.said(c.name, "He is the best snowman in the world!"))
        s.append("Then they went inside and drank warm milk by the fire.")
        return s

    def plot_day(self, c):
        place = self.pick(PLACES)
        mentor = self.pick(MENTORS)
        s = [c.fill(f"One day, {{name}} and {{his}} {mentor} went to the {place}.")]
        s.append(f"They saw {self.pick(SIGHTS)}.")
        s.append(c.fill("{name} liked to " + self.pick(HOBBIES) + ", so {he} did that too."))
        if self.chance(0.5):
            s.append(self.said(c.name, f"Can we come back to the {place} tomorrow?", "asked"))
            s.append(f'"Yes, we can," said {c.his} {mentor}.')
        s.append(c.fill("When they got home, {name} was tired but " + self.pick(FEELINGS_GOOD) + "."))
        return s

    PLOTS = ["plot_lost", "plot_new_friend", "plot_skill", "plot_share", "plot_rescue",
             "plot_storm", "plot_treasure", "plot_gift", "plot_listen", "plot_snow", "plot_day"]

    def story(self, c=None, short=False):
        c = c or Character(self.rng)
        s = [self.opening(c)]
        if not short or self.chance(0.5):
            s.append(self.trait(c))
        s += getattr(self, self.pick(self.PLOTS))(c)
        if not short and self.chance(0.25):
            s.append(self.pick(["The end.", "And they lived happily ever after.",
                                "It was a wonderful day."]))
        return " ".join(s)


# ---- questions and answers -----------------------------------------------------------------

FACTS = [
    ("What color is the sky?", "The sky is blue."),
    ("What color is grass?", "Grass is green."),
    ("What color is the sun?", "The sun is yellow."),
    ("What color is snow?", "Snow is white."),
    ("What color is a banana?", "A banana is yellow."),
    ("What color is an apple?", "An apple is red or green."),
    ("Where do fish live?", "Fish live in the water."),
    ("Where do birds live?", "Birds live in nests in the trees."),
    ("What do bees make?", "Bees make honey."),
    ("What do cows give us?", "Cows give us milk."),
    ("What do hens give us?", "Hens give us eggs."),
    ("How many legs does a dog have?", "A dog has four legs."),
    ("How many legs does a bird have?", "A bird has two legs."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("How many days are in a week?", "There are seven days in a week."),
    ("What do we use to see?", "We use our eyes to see."),
    ("What do we use to hear?", "We use our ears to hear."),
    ("When do we sleep?", "We sleep at night."),
    ("What is rain?", "Rain is water that falls from the clouds."),
    ("What is a rainbow?", "A rainbow is a bow of colors in the sky after the rain."),
    ("Why do we brush our teeth?", "We brush our teeth to keep them clean and strong."),
    ("What is the opposite of hot?", "The opposite of hot is cold."),
    ("What is the opposite of big?", "The opposite of big is small."),
    ("What is the opposite of up?", "The opposite of up is down."),
    ("What is the opposite of happy?", "The opposite of happy is sad."),
    ("What is the opposite of day?", "The opposite of day is night."),
    ("What is the opposite of fast?", "The opposite of fast is slow."),
    ("What comes after Monday?", "Tuesday comes after Monday."),
    ("What comes after Friday?", "Saturday comes after Friday."),
    ("Can you count to five?", "Yes! One, two, three, four, five."),
    ("Can you count to three?", "Yes! One, two, three."),
    ("What is the biggest animal?", "The blue whale is the biggest animal."),
    ("What do plants need to grow?", "Plants need water, sun and soil to grow."),
    ("Is the moon hot?", "No, the moon is cold and far away."),
]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten"]
GREETINGS = [
    (["Hello!", "Hi!", "Hi there!", "Hello", "Hey!", "Good morning!"],
     ["Hello! How can I help you today?", "Hi! What would you like to talk about?",
      "Hello! Do you want to hear a story?", "Hi there! It is nice to meet you."]),
    (["How are you?", "How are you today?"],
     ["I am fine, thank you! How are you?", "I am very well, thank you for asking."]),
    (["What is your name?", "Who are you?", "What are you?"],
     ["I am Pagoda, a small demo model. I like to tell stories.",
      "My name is Pagoda. I am a tiny language model that tells short stories."]),
    (["Thank you!", "Thanks!", "Thank you very much."],
     ["You are welcome!", "You are welcome! I am happy to help."]),
    (["Goodbye!", "Bye!", "Good night!"],
     ["Goodbye! Have a nice day!", "Bye! Come back soon!", "Good night! Sleep well."]),
    (["I am sad.", "I feel sad today."],
     ["I am sorry you feel sad. Do you want to hear a happy story?",
      "Oh no! A hug and a good story can help. Do you want one?"]),
    (["Yes, please.", "Yes!", "Okay."],
     None),  # answered with a story, see chat_turns
]


def what_is_animal(rng):
    kind = rng.choice(ANIMAL_KINDS)
    if kind == "robot":
        return ("What is a robot?", "A robot is a machine that can move and help people.")
    sound = KINDS[kind][1]
    q = rng.choice([f"What does a {kind} say?", f"What sound does a {kind} make?"])
    if sound:
        return (q, f"A {kind} says {sound}.")
    return (q, f"A {kind} does not say much. It is a quiet animal.")


def arithmetic(rng):
    a, b = rng.randint(0, 5), rng.randint(0, 5)
    if rng.random() < 0.5:
        return (f"What is {a} plus {b}?", f"{a} plus {b} is {a + b}.")
    return (f"What is {NUMBER_WORDS[a]} plus {NUMBER_WORDS[b]}?",
            f"{cap(NUMBER_WORDS[a])} plus {NUMBER_WORDS[b]} is {NUMBER_WORDS[a + b]}.")


STORY_REQUESTS = ["Tell me a story.", "Can you tell me a story?", "Tell me a short story.",
                  "Please tell me a story.", "I want a story."]


def story_request(rng, writer):
    if rng.random() < 0.5:
        return rng.choice(STORY_REQUESTS), writer.story(short=True)
    c = Character(rng)
    if rng.random() < 0.5:
        q = rng.choice([f"Tell me a story about a {c.kind}.",
                        f"Can you tell me a story about a {c.kind}?",
                        f"Tell me a short story about a {c.kind}."])
    else:
        q = rng.choice([f"Tell me a story about a {c.kind} named {c.name}.",
                        f"Write a story about {article(c.kind)} {c.kind} called {c.name}."])
    return q, writer.story(c=c, short=True)


def qa_pair(rng, writer):
    r = rng.random()
    if r < 0.25:
        return story_request(rng, writer)
    if r < 0.60:
        return rng.choice(FACTS)
    if r < 0.72:
        return what_is_animal(rng)
    if r < 0.80:
        return arithmetic(rng)
    qs, ans = rng.choice(GREETINGS[:-1])
    return rng.choice(qs), rng.choice(ans)


SYSTEM_PROMPTS = ["You are a helpful assistant.", "You are Pagoda, a friendly storyteller.",
                  "You are a kind assistant who answers in short sentences."]


def chat_document(rng, writer):
    """A 1-3 turn conversation rendered as segments, exactly like CHAT_TEMPLATE does."""
    segs = []
    if rng.random() < 0.3:
        segs += [Special(ROLE_TOKENS["system"]), rng.choice(SYSTEM_PROMPTS), Special(EOS)]
    turns = rng.choice([1, 1, 2, 2, 3])
    for t in range(turns):
        if t > 0 and rng.random() < 0.15:
            q, a = rng.choice(GREETINGS[-1][0]), writer.story(short=True)
        else:
            q, a = qa_pair(rng, writer)
        segs += [Special(ROLE_TOKENS["user"]), q, Special(EOS),
                 Special(ROLE_TOKENS["assistant"]), a, Special(EOS)]
    return segs


def plain_qa_document(rng, writer):
    lines = []
    for _ in range(rng.randint(1, 4)):
        q, a = qa_pair(rng, writer) if rng.random() < 0.7 else rng.choice(FACTS)
        lines.append(f"Q: {q}\nA: {a}")
    return ["\n".join(lines)]


def generate(seed, n_docs):
    """n_docs documents; each a list of segments (str or Special). About 72% stories, 24%
    chats, 4% plain Q&A."""
    rng = random.Random(seed)
    writer = StoryWriter(rng)
    docs = []
    for _ in range(n_docs):
        r = rng.random()
        if r < 0.72:
            docs.append([writer.story()])
        elif r < 0.96:
            docs.append(chat_document(rng, writer))
        else:
            docs.append(plain_qa_document(rng, writer))
    return docs


if __name__ == "__main__":
    import sys
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    for d in generate(1, n):
        print("".join(s.text if isinstance(s, Special) else s for s in d))
        print("---")
